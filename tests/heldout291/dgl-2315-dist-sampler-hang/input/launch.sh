python3 ~/gnn/dgl/tools/launch.py \
    --workspace ~/graphsage/ \
    --num_trainers 1 \
    --num_samplers 1 \
    --num_servers 1 \
    --part_config cora.json \
    --ip_config ip_config.txt \
    "/home/xinchen/miniconda3/envs/py37/bin/python dgl_code/train_dist.py --graph_name cora --ip_config ip_config.txt --num_servers 1 --num_epochs 30 --batch_size 1000 --num_workers 1 | tee /home/xinchen/graphsage/output.txt
